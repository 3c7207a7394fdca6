"""Where this process stands in a job: its device, process group and rendezvous store."""
