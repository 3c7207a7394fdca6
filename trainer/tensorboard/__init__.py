"""The TensorBoard-compatible writer: ``SummaryWriter``, its ``FileWriter`` and the payloads."""
