"""Text helpers that any layer may use: where a quote or a gold span sits in a response (`locate`)."""
