"""What model providers accept as tool definitions (spec: providers.md), as dated data.

Each provider's rules live in a TOML file beside this module: one rule per fact, with the
document it was read in and the date. The kit judges a plugin's tools against them and the
host says which providers its tool snapshot fits, so the rules live here, below both.
"""

PROVIDERS = ("openai", "anthropic", "gemini")  # the order of reports and options
