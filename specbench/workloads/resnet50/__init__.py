"""ResNet-50 image classification (HPC AI500 V2, CARAML): the executor and its --data path."""
