"""Cowork between identities that share a workspace: durable inboxes (push, at-most-once
drain within a byte budget, status) and the recent-activity log behind partner peek.

Plain synchronous Python over SQLite and memory; never imports runtime, service, api,
mcp or a web library.
"""

from memhubd.cowork.activity import Activity, ActivityLog, is_active, visible_to
from memhubd.cowork.inbox import (
    Delivery,
    EmptyMessage,
    InboxError,
    InboxFull,
    InboxLimits,
    InboxState,
    InboxStore,
    Message,
    MessageTooLarge,
    Receipt,
    SelfPush,
)
from memhubd.cowork.shelf import CoworkShelf

__all__ = [
    "Activity",
    "ActivityLog",
    "CoworkShelf",
    "Delivery",
    "EmptyMessage",
    "InboxError",
    "InboxFull",
    "InboxLimits",
    "InboxState",
    "InboxStore",
    "Message",
    "MessageTooLarge",
    "Receipt",
    "SelfPush",
    "is_active",
    "visible_to",
]
