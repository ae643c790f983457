"""The board: one message kept pinned in a chat that lists its open issues, edited in place."""
