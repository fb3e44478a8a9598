# SPDX-License-Identifier: MIT
"""gdbsample_analysis: read gdbsample captures, name their frames, fold, report and diff them."""
