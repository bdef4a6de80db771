"""Pure folds from the log to what the model may see: the history surface and the working state."""
