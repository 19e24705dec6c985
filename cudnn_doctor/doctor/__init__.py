"""The use-cases that check, fix, explain and image share: what a command asks for, above the judgements and the
plan, below the commands (DESIGN.md, the use-case floor)."""
