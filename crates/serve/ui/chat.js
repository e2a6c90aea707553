/* placeholder: the console's chat.js */
