// hitl serve: the terminal gets the keyboard as soon as its websocket is open, so keys typed
// after the page loads reach the console (and the footer shows its keys) without a click.
// textual.js marks the body "-loaded" when the socket opens and tells the console "focus" on a
// focus event of .xterm-screen; the keys go to xterm's hidden textarea.
(() => {
  let tries = 0;
  const focusTerminal = () => {
    const input = document.querySelector(".xterm-helper-textarea");
    const screen = document.querySelector(".xterm-screen");
    if (input && screen && document.body.classList.contains("-loaded")) {
      input.focus();
      screen.dispatchEvent(new FocusEvent("focus"));
      return;
    }
    if (++tries < 1200) setTimeout(focusTerminal, 50);
  };
  window.addEventListener("load", focusTerminal);
})();
