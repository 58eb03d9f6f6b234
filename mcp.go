package ingestd

// MCPVerdictKey is the _meta key under which ingestd's MCP retrieve tool
// carries the verdict, beside the same verdict in structuredContent, so
// that a host can enforce it without reading content. A gate requires
// both and requires them to agree (client.VerdictFromMCP).
const MCPVerdictKey = "io.ingestd/verdict"
