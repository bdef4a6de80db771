"""Token budgets: conservative size estimates, reconciliation and allocation."""
