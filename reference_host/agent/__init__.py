"""Agent runs: a chat model, the tool snapshot, and the loop between them."""
