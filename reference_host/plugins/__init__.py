"""FengYu plugins in the host: their lifecycle (lifecycle), the link-free install copy
(install_copy), install validators found through entry points (validators), and their tools as
worker-backed callbacks (worker_tools) whose arguments are checked first (input_contract)."""
