"""Skills as files: ``parsing`` reads one SKILL.md, ``discovery`` finds them under skills roots, and
``eligibility`` says which ones the agent would offer on this machine."""
