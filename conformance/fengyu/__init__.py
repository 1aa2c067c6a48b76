"""The FengYu profile: manifest.json with rpc.methods + aiTools, a JSON-RPC worker over stdio."""
