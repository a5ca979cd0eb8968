"""moto, extended with what alarm-triage needs and moto lacks.

See docs/local-world.md for what each extension does and why.
"""
