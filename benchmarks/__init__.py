"""Benchmarks of the reference host and the kit: `python -m benchmarks [--quick]`.

Every figure is a ratio against a baseline measured in the same run, so the numbers travel
between machines better than absolute times do. See benchmarks/README.md for what each row
means and benchmarks/results.md for the last full run.
"""
