# The official MCP reference server, @modelcontextprotocol/server-everything,
# started by ingestd's gateway over stdio as an upstream it did not write
# (gateway TestEverythingServerUpstream). Installed with npm into a
# temporary prefix, pinned; needs node (Debian's, as node.sh installs).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  ci_apt_install nodejs npm
fi
everything_prefix="$(mktemp -d)"
npm install --prefix "$everything_prefix" --no-audit --no-fund --loglevel=error \
  @modelcontextprotocol/server-everything@2026.8.31
INGESTD_TEST_MCP_EVERYTHING="$everything_prefix/node_modules/.bin/mcp-server-everything"
export INGESTD_TEST_MCP_EVERYTHING
required_vars+=(INGESTD_TEST_MCP_EVERYTHING)
