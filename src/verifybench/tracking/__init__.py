"""Runs over time: logging a run directory to MLflow (`mlflow_store`) and the history page drawn from run
directories (`history`)."""
