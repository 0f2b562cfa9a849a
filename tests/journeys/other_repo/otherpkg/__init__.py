"""Another project's own model package (imports burnlike, is not part of it)."""
