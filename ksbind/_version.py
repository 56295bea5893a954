__version__ = "0.1.0"
#: Version of the data templates see; bumped when the context changes incompatibly.
TEMPLATE_API = 1
