"""The ONNX form of an export: `graph` traces and quantises the cut model's graph, `step` writes and checks it
inside an export (parity with the torch export, the int8 graph's cosine), `encoder` runs it with onnxruntime.
"""
