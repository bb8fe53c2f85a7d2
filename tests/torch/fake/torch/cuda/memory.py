"""torch.cuda.memory (its set_per_process_memory_fraction is torch.cuda's)."""
