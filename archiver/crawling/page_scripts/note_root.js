function (keeper) {
  const view = this.ownerDocument && this.ownerDocument.defaultView;
  if (view && view[keeper]) view[keeper].noteRoot(this);
}
