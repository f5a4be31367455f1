"""Tools on top of the package (layer 4): they may import anything below; nothing below imports them."""
