# The official MCP reference servers (@modelcontextprotocol/server-everything,
# server-filesystem, server-memory), started by ingestd's gateway over stdio
# as upstreams it did not write (gateway TestEverythingServerUpstream,
# TestReferenceServersUpstream; cmd/ingestd TestGatewayTypeScriptHost,
# TestCheckUpstreams). `npm ci` installs exactly what
# e2e/mcpservers/package-lock.json pins; needs node (Debian's, as node.sh
# installs).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  ci_apt_install nodejs npm
fi
(cd e2e/mcpservers && npm ci --no-audit --no-fund --loglevel=error)
mcp_bin="$(pwd)/e2e/mcpservers/node_modules/.bin"
INGESTD_TEST_MCP_EVERYTHING="$mcp_bin/mcp-server-everything"
INGESTD_TEST_MCP_FILESYSTEM="$mcp_bin/mcp-server-filesystem"
INGESTD_TEST_MCP_MEMORY="$mcp_bin/mcp-server-memory"
export INGESTD_TEST_MCP_EVERYTHING INGESTD_TEST_MCP_FILESYSTEM INGESTD_TEST_MCP_MEMORY
required_vars+=(INGESTD_TEST_MCP_EVERYTHING INGESTD_TEST_MCP_FILESYSTEM INGESTD_TEST_MCP_MEMORY)
