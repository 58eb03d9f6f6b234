# Node.js and the official MCP TypeScript SDK, for the end-to-end test
# that drives `ingestd mcp` (stdio) and /mcp (Streamable HTTP) with an MCP
# client written by someone else (cmd/ingestd TestMCPTypeScriptClient).
# Debian's nodejs and npm unless a node with npm is already installed;
# `npm ci` installs exactly what e2e/mcpts/package-lock.json pins.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  ci_apt_install nodejs npm
fi
node --version
(cd e2e/mcpts && npm ci --no-audit --no-fund --loglevel=error)
INGESTD_TEST_NODE="$(command -v node)"
export INGESTD_TEST_NODE
required_vars+=(INGESTD_TEST_NODE)
