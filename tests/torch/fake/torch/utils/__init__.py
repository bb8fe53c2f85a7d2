from torch.utils import cpp_extension  # noqa: F401
