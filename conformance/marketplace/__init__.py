"""A marketplace night: many targets, one bounded run each, in shards joined afterwards."""
