"""What is made from a run's JSON report alone: SARIF, HTML and the comparison of two runs."""
