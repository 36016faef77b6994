"""SQLite storage through sqlite-utils: schema migrations, pages, templates and rules, LSH buckets, clusters."""
