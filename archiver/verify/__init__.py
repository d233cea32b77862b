"""Proof: a snapshot read cold for integrity, consistency, completeness and mirror links."""
