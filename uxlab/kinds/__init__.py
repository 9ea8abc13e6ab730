"""Trial kinds: one package per kind of trial a study can hold.

`chain`: agent chains (model calls and tool pauses laid on one timeline from the send).
"""
