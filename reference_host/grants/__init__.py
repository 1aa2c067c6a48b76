"""FileRef grants (spec: host.md#fileref-grants): what a conversation may hand to which plugin
(grant_store), the host-made copies a worker gets instead of paths (copies), and the host-wide
bound on those copies (quota)."""
