"""dsv4_oracle — an independent Python + NumPy reference of the DeepSeek V4.1 text path.

See ../README.md for the module contract and docs/strict-numerics.md for the numerics.
"""
