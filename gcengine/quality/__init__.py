"""Compaction quality: anchor retention, prompt-cache cost, and policy export to other
frameworks. Imported through ``gcengine``, the front door."""
