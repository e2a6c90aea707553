/* placeholder: the console's app.js */
