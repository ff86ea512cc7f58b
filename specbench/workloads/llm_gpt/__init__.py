"""CARAML's GPT training benchmark."""
