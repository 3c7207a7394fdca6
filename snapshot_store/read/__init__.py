"""The store's read side: follow a store's new bytes safely and keep the points read."""
