"""The visdom server side: where it is, starting it, asking it, and what runs inside it.

* :mod:`~visualizer.server.endpoint`: where visdom listens, and its login;
* :mod:`~visualizer.server.process`: a visdom server in a child process (start, stop, ensure);
* :mod:`~visualizer.server.probes`: whether visdom answers, and serves what its page loads;
* ``python -m visualizer.server`` (:mod:`~visualizer.server.__main__`): the foreground
  server and the child's entry;
* :mod:`~visualizer.server.child`, :mod:`~visualizer.server.page`: patches applied
  inside the child process, to visdom's server and to its page;
* :mod:`~visualizer.server.assets`, :mod:`~visualizer.server.tarballs`: the JS/CSS
  files visdom serves, installed or fetched from the npm registry.

Nothing is imported here: the child process should not pay for the rest.
"""
