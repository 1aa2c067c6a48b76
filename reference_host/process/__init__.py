"""Worker processes: how a plugin's worker is launched, spoken to, timed out and restarted."""
