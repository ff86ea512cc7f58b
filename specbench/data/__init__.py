"""Input pipelines: generated and ImageNet images (CPU and GPU JPEG paths), tokens, climate fields."""
