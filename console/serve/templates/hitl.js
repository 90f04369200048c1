// hitl serve: the terminal gets the keyboard as soon as textual-serve has drawn it, so
// keys typed after the page loads reach the console without a click first.
(() => {
  let tries = 0;
  const focusTerminal = () => {
    const input = document.querySelector(".xterm-helper-textarea");
    if (input) {
      input.focus();
      return;
    }
    if (++tries < 600) setTimeout(focusTerminal, 50);
  };
  window.addEventListener("load", focusTerminal);
})();
