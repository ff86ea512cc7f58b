"""MLPerf Training ResNet-50: the resnet50 executor's model and data, trained by MLPerf's rules."""
