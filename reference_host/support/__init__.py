"""Small parts with no host concept of their own: files reached beneath a directory descriptor
(beneath), bounded quoting of echoed values (quoting), and an app served on loopback for tests,
benchmarks and samples (loopback)."""
