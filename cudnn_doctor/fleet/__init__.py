"""Many nodes: merging their reports, and running `check` on them through Slurm."""
