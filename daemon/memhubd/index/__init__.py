"""The lexical index: one segment per source file, composed per workspace, built once."""

from memhubd.index.segment import Segment, build_segment
from memhubd.index.workspace import WorkspaceIndex, adopt_index, build_index, index_for

__all__ = ["Segment", "WorkspaceIndex", "adopt_index", "build_index", "build_segment", "index_for"]
