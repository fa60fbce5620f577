"""Review of compaction decisions: comments, verdicts and the review queue."""
