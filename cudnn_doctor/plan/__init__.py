"""The treatment plan: Report + findings + compat data -> one Plan (typed actions); every fix is rendered from it."""

from cudnn_doctor.plan.actions import Action, EnvChange, Plan

__all__ = ["Action", "EnvChange", "Plan"]
