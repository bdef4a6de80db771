"""What a tool's output becomes on its way into the context, decided once at record time.

``arrival`` stores the full text as an artifact and decides the view the model sees:
lossless reductions always, noise removal for the kinds that have noise, and a lossy
cut only when the output does not fit the room. ``cap`` bounds any text to a head, a
fixed omission marker carrying an artifact pointer, and a tail. ``compressors`` reduce
an output by kind (test runners, builds, linters, git, search, listings, JSON, stack
traces) without ever dropping a failure line. ``scan_window`` picks the part of a very
long output the compressors read.
"""
