"""HPC AI500 V2 extreme weather analytics: DeepLabv3+ segmentation of CAM5 climate fields."""
