"""The store's write side: the Recorder, its writer thread, encoders, segments and documents."""
