"""Reading error messages: reader (facts from any text) -> classify (facts -> causes) -> catalog (specific causes)."""
