// never compiled
