"""tether over the Model Context Protocol: ``tether mcp`` serves one run to one MCP client."""
