"""Timing at the glass: when a terminal emulator really painted each chunk.

Past the pseudo-terminal uxlab cannot see: the emulator reads the frame's bytes, parses,
lays out and paints, on its own clock and batching. Under an X server (a real display, or
Xvfb on a headless machine) this package times each repaint of the emulator's window:

- the app writes a one-cell *marker* after every frame that holds chunks (`marker`): the
  bottom-right cell's background colour encodes the frame's number, so a repaint is matched
  to the frame it shows by what it shows, not by order;
- a probe process (`probe`, started by `feed`) subscribes to the X DAMAGE extension on the
  window, notes the monotonic time of every repaint (the clock the player uses) and reads
  the marker cell's pixel back;
- `matching` turns those repaints into a painted time per chunk, and says which chunks
  shared a repaint with a later one.

`availability.glass_problem()` says plainly why glass timing cannot run somewhere (no X
display, Wayland only, macOS, SSH, no DAMAGE, no window id). Nothing here imports Textual.
"""
