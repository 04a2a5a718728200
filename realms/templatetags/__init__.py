"""Template tags of the themes and the console: messages by key, the console's realm switcher."""
